# expect: line=15 message="out of range"
provider "velyrix" { region = "us-east-1" }

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
  workload {
    model_params = 405e9
    au_target = 1.5
  }
}
