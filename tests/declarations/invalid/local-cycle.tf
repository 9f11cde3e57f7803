# expect: line=0 message="refers to itself (a cycle)"
locals {
  a = local.b
  b = local.a
}
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = local.a
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
