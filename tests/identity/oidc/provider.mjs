// A certified OpenID provider (npm oidc-provider) for the identity tests, on http://localhost:PORT.
// Usage: node provider.mjs PORT CONFIG_JSON, where CONFIG_JSON is
//   {"clients": [oidc-provider client metadata...], "accounts": {"<login>": {"groups": [...], "name": "..."}}}
// Its development login and consent pages are what Chromium fills in: any password logs in as the login
// typed (which must be one of "accounts"); claims: sub, email, email_verified, name, groups.
import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const config = JSON.parse(process.argv[3]);
const accounts = config.accounts;

const provider = new Provider(`http://localhost:${port}`, {
  clients: config.clients,
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: id, email_verified: true, name: account.name || id, groups: account.groups || [] };
      },
    };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
  scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'],
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['velyrix-test-provider-cookie-key'] },
});
provider.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening ${port}\n`);
});
