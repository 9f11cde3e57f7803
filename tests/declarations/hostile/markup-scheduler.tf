# expect: exit=2 line=8 message="unknown scheduler '[red]slurm'"
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "[red]slurm"
  storage {
    parallel_fs_tb = 800
  }
}
