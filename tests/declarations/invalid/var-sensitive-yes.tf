# expect: line=3 message="'sensitive' must be true or false"
variable "token" {
  default   = "x"
  sensitive = "yes"
}
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
