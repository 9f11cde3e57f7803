# expect: exit=2 line=4 message="'name' = \"42\" must be"
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = 42
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
  }
}
