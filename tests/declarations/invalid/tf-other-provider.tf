# expect: line=3 message="provider 'aws' (source 'hashicorp/aws') is not supported"
terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
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
