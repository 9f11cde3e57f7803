# expect: line=9 message="did you mean 'var.nodes'"
variable "nodes" {
  default = 64
}
provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = var.node
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
    object_tb      = 2000
  }
}
