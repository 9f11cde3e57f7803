# expect: line=1 message="did you mean 'us-east-1'"
provider "velyrix" { region = "us-east1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
    object_tb      = 2000
  }
}
