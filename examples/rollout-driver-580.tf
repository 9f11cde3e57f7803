resource "velyrix_rollout" "driver_580" {
  region    = "us-east-1"
  component = "gpu_driver"
  version   = "580.95.05"
  target { node_type = "hgx-h200-8g" }            # or: clusters = ["acme-pretrain"]
  stages    = ["staging", "canary", "production"]
  canary { nodes = 4, soak = "2h" }
  max_unavailable = "10%"                         # also per scalable unit and per cluster
  window { days = ["sat", "sun"], start = "02:00", hours = 6, timezone = "UTC" }
  notice_hours = 72
  gates    = ["acceptance", "no_new_xids", "all_reduce_baseline"]
  rollback = "automatic"
}
