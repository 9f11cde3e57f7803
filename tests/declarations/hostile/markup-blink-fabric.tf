# expect: exit=2 line=7 message="unknown fabric '[blink]infiniband[/blink]'"
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "[blink]infiniband[/blink]"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
  }
}
