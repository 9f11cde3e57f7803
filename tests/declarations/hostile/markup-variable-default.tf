# expect: exit=2 line=10 message="unknown fabric '[/][/][/]'"
variable "fab" {
  default = "[/][/][/]"
}
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = var.fab
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
  }
}
