// oidc-provider on 127.0.0.1: the authorization server of the loopback recipe in
// docs/authorization.md (for examples/oauth_server.py) and of the authorization tests.
//
//   eval "$(examples/oidc/setup.sh)"   # installs oidc-provider once; sets OIDC_NODE, OIDC_MODULES
//   PORT=3000 OIDC_MODULES=$OIDC_MODULES $OIDC_NODE examples/oidc/provider.mjs
//                                # listens on PORT (default: a free one); prints one JSON line:
//                                # {"issuer": "http://127.0.0.1:PORT", "port": PORT}
//
// Scopes: "notes" and "notes:write" (examples/oauth_server.py), "mcp" and "files:write"
// (the tests), "offline_access" (refresh tokens).
// Resource indicators (RFC 8707) are on: a resource whose path ends in "/opaque" gets
// opaque access tokens (for introspection), any other resource gets JWT access tokens
// (RFC 9068) with "aud" = the resource. Access tokens live ACCESS_TTL seconds (env, default
// 300). Clients: "machine" (client_credentials, secret "machine-secret"), "rs" (introspection,
// secret "rs-secret"), and dynamic registration is open. The login step is scripted: the
// interaction page is a form; POST /interaction/:uid/login with login=<name> signs that
// user in; the consent step that follows grants what was asked. For development only: any
// name logs in, without a password. DPoP (RFC 9449) is on, and every token request that
// carries a proof must carry this server's nonce (it answers the first with
// use_dpop_nonce): such requests get tokens bound to the proof's key (cnf.jkt).
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// OIDC_MODULES: the node_modules folder setup.sh installed (ES modules ignore NODE_PATH).
const modules = process.env.OIDC_MODULES;
const { default: Provider } = await import(
  pathToFileURL(join(modules, 'oidc-provider', 'lib', 'index.js')).href);

const ACCESS_TTL = Number(process.env.ACCESS_TTL || 300);
const SCOPES = ['mcp', 'files:write', 'notes', 'notes:write', 'offline_access'];
// What a token for a resource (an MCP server) may grant.
const RESOURCE_SCOPES = 'mcp files:write notes notes:write';

const server = createServer();
await new Promise((resolve) => server.listen(Number(process.env.PORT || 0), '127.0.0.1', resolve));
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

// PROXY_REDIRECT_URI: also register "trimcp-proxy" (secret "trimcp-proxy-secret"), the one
// client of trimcp's own authorization server (examples/oauth_proxy_server.py) here, with
// that callback URL. REGISTRATION=off switches dynamic registration off (as at GitHub or
// Google: only pre-registered clients).
const proxyClients = process.env.PROXY_REDIRECT_URI
  ? [{ client_id: 'trimcp-proxy', client_secret: 'trimcp-proxy-secret',
       grant_types: ['authorization_code'], response_types: ['code'],
       token_endpoint_auth_method: 'client_secret_post',
       redirect_uris: process.env.PROXY_REDIRECT_URI.split(' ') }]
  : [];

const configuration = {
  clients: [
    ...proxyClients,
    { client_id: 'machine', client_secret: 'machine-secret', grant_types: ['client_credentials'],
      redirect_uris: [], response_types: [], scope: 'mcp files:write' },
    { client_id: 'rs', client_secret: 'rs-secret', grant_types: [], redirect_uris: [],
      response_types: [] },
  ],
  scopes: ['openid', ...SCOPES],
  claims: { openid: ['sub'] },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: process.env.REGISTRATION !== 'off' },
    clientCredentials: { enabled: true },
    introspection: { enabled: true, allowedPolicy: async () => true },
    revocation: { enabled: true },
    dPoP: { enabled: true, nonceSecret: Buffer.alloc(32, 7), requireNonce: () => true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resource) => ({
        scope: RESOURCE_SCOPES,
        audience: resource,
        accessTokenTTL: ACCESS_TTL,
        accessTokenFormat: new URL(resource).pathname.endsWith('/opaque') ? 'opaque' : 'jwt',
      }),
    },
  },
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: { AccessToken: ACCESS_TTL, ClientCredentials: ACCESS_TTL, RefreshToken: 3600,
         Interaction: 600, Session: 3600, Grant: 3600, AuthorizationCode: 60 },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  cookies: { keys: ['test-cookie-key'] },
};

const provider = new Provider(issuer, configuration);
provider.proxy = false;

provider.use(async (ctx, next) => {
  const match = /^\/interaction\/([^/]+)(\/login)?$/.exec(ctx.path);
  if (!match) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { prompt, params } = details;
  if (process.env.OIDC_DEBUG) console.error(JSON.stringify(prompt));
  if (prompt.name === 'consent') {
    // Grant what is asked (the scripted user always consents).
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes || {})) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(ctx.req, ctx.res, { consent: { grantId } },
      { mergeWithLastSubmission: true });
    return undefined;
  }
  if (!match[2]) {
    ctx.type = 'html';
    ctx.body = `<form method="post" action="/interaction/${details.uid}/login">` +
      '<input name="login"><button>Sign in</button></form>';
    return undefined;
  }
  const body = await new Promise((resolve) => {
    let data = '';
    ctx.req.on('data', (chunk) => { data += chunk; });
    ctx.req.on('end', () => resolve(new URLSearchParams(data)));
  });
  const accountId = body.get('login') || 'alice';
  await provider.interactionFinished(ctx.req, ctx.res, { login: { accountId } },
    { mergeWithLastSubmission: false });
  return undefined;
});

server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer, port })}\n`);
process.on('SIGTERM', () => process.exit(0));
