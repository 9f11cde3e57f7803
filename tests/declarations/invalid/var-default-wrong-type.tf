# expect: line=1 message="is not a number"
variable "nodes" {
  type = number
  default = "many"
}
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
}
