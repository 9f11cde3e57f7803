"""Operations on top of the control plane: scheduler policy, SLA, billing, NOC, rollouts."""
