"""The SSH CAs' private keys sealed at rest: ``ssh_authorities.private_key_pem`` (plain OpenSSH PEM)
becomes ``sealed_private_key`` (AES-256-GCM under the region's ``ssh-ca.key``, bound to the tenant:
``controlplane/access/ca_sealing.py``); the upgrade seals every existing row, the downgrade opens them.

Revision ID: 0024
Revises: 0022
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from velyrix.controlplane.access import ca_sealing

revision = "0024"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ssh_authorities", sa.Column("sealed_private_key", sa.LargeBinary(), nullable=True))
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, tenant_id, private_key_pem FROM ssh_authorities")).all()
    for row_id, tenant_id, pem in rows:
        bind.execute(
            sa.text("UPDATE ssh_authorities SET sealed_private_key = :sealed WHERE id = :id"),
            {"sealed": ca_sealing.seal(pem.encode(), tenant_id), "id": row_id},
        )
    with op.batch_alter_table("ssh_authorities") as batch:
        batch.alter_column("sealed_private_key", existing_type=sa.LargeBinary(), nullable=False)
        batch.drop_column("private_key_pem")


def downgrade() -> None:
    op.add_column("ssh_authorities", sa.Column("private_key_pem", sa.Text(), nullable=True))
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, tenant_id, sealed_private_key FROM ssh_authorities")).all()
    for row_id, tenant_id, sealed in rows:
        bind.execute(
            sa.text("UPDATE ssh_authorities SET private_key_pem = :pem WHERE id = :id"),
            {"pem": ca_sealing.unseal(bytes(sealed), tenant_id).decode(), "id": row_id},
        )
    with op.batch_alter_table("ssh_authorities") as batch:
        batch.alter_column("private_key_pem", existing_type=sa.Text(), nullable=False)
        batch.drop_column("sealed_private_key")
