# expect: exit=2 line=10 message="number 1e400 is out of range"
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 1e400
  }
}
