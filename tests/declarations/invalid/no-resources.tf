# expect: line=0 message="no velyrix_cluster resource"
provider "velyrix" { region = "us-east-1" }
