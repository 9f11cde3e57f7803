# expect: line=4 message="invalid value for variable 'nodes': a multiple of 4"
variable "nodes" {
  default = 6
  validation {
    condition     = var.nodes % 4 == 0
    error_message = "a multiple of 4"
  }
}
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = var.nodes
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
