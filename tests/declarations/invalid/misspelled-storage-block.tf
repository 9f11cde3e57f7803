# expect: line=9 message="did you mean 'storage'"
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storag {
    parallel_fs_tb = 800
    object_tb      = 2000
  }
}
