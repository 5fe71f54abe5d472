// A real OpenID Connect provider (the oidc-provider package) for the SSO test. Two clients,
// `cdapi` and `cdapi-plain` (secret `cdapi-secret`), whose redirect URIs are given; PKCE
// required. Interactions are answered at once (login as `alice` through `cdapi`, as `bob`
// through `cdapi-plain`, then consent), so a test can walk the browser's redirects with a
// plain HTTP client and a cookie jar.
// Usage: node oidc-provider.mjs <port> <redirect-uri of cdapi> <redirect-uri of cdapi-plain>
import http from 'node:http';
import Provider from 'oidc-provider';

const [port, redirectUri, plainRedirectUri] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const accounts = { cdapi: 'alice', 'cdapi-plain': 'bob' };

const provider = new Provider(issuer, {
  clients: [
    { client_id: 'cdapi', client_secret: 'cdapi-secret', redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] },
    { client_id: 'cdapi-plain', client_secret: 'cdapi-secret', redirect_uris: [plainRedirectUri], grant_types: ['authorization_code'], response_types: ['code'] },
  ],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false } },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  findAccount: async (ctx, sub) => ({
    accountId: sub,
    claims: async () => ({ sub, email: `${sub}@example.com`, email_verified: true, name: sub }),
  }),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: ['cdapi-test-cookie-key'] },
});

const callback = provider.callback();
http.createServer(async (req, res) => {
  try {
    if (req.url.startsWith('/interaction/')) {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login') {
        const accountId = accounts[details.params.client_id];
        await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
        return;
      }
      const grant = new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      const missing = details.prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      if (missing.missingResourceScopes) {
        for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes)) grant.addResourceScope(indicator, scopes.join(' '));
      }
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return;
    }
    callback(req, res);
  } catch (e) {
    console.error(e);
    res.statusCode = 500;
    res.end(String(e));
  }
}).listen(Number(port), '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
