# expect: line=14 message="refers to sensitive values"
variable "token" {
  default   = "x"
  sensitive = true
}
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
output "t" {
  value = var.token
}
