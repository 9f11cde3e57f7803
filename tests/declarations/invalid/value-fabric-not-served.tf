# expect: line=7 message="cannot be served"
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h100-8g"
  node_count = 64
  fabric     = "infiniband-xdr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
    object_tb      = 2000
  }
}
