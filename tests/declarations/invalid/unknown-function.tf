# expect: line=5 message="unknown function 'lenght'"
provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = lenght([1, 2])
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
