# Test policy for the Slurm twin: two cost centers, three teams; users are system accounts that exist
# on every Debian host (root, daemon = uid 1, bin = uid 2) so that jobs can run as them.
cluster = "twin"

cost_center "research" {
  shares = 60
}

cost_center "product" {
  shares = 40
}

team "llm" {
  cost_center = "research"
  shares      = 3
  gpu_limit   = 16
  users       = ["root", "daemon"]
}

team "vision" {
  cost_center = "research"
  shares      = 1
  qos         = ["normal", "high", "low"]
  default_qos = "normal"
  users       = ["daemon", "bin"]
}

team "search" {
  cost_center = "product"
  shares      = 2
  users       = ["bin"]
}

qos "high" {
  priority  = 100
  preempt   = ["low"]
  gpu_limit = 24
}

qos "low" {
  priority = 0
}

user "daemon" {
  shares       = 2
  default_team = "vision"
}
