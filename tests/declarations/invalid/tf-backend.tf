# expect: line=2 message="backend \"s3\" is not implemented"
terraform {
  backend "s3" {
    bucket = "x"
  }
}
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
