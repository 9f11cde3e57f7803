# expect: exit=2 line=8 message="unknown node type '[/]-8g'"
variable "t" {
  default = "[/]"
}
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "${var.t}-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
  }
}
