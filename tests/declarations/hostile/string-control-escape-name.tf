# expect: exit=2 line=4 message="\"a\\u0007b\""
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "a\u0007b"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
  }
}
