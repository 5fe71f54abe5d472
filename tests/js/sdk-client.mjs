// The official Directus JS SDK against our REST edge: login, read items, refresh, read again,
// logout, and a refresh with the logged-out refresh token (which must be refused). Prints one JSON line with what
// happened; the Rust test (tests/tests/auth_sdk.rs) judges it.
// Usage: node sdk-client.mjs <base-url> <email> <password>
import { createDirectus, authentication, rest, readItems, refresh } from '@directus/sdk';

const [url, email, password] = process.argv.slice(2);
const client = createDirectus(url).with(authentication('json', { autoRefresh: false })).with(rest());
const out = {};
try {
  const login = await client.login(email, password);
  out.login = { access_token: typeof login.access_token, refresh_token: typeof login.refresh_token, expires: login.expires };
  out.items = await client.request(readItems('articles', { fields: ['id', 'title'], sort: ['id'], limit: 2 }));
  const refreshed = await client.refresh();
  out.refreshed = { rotated: refreshed.refresh_token !== login.refresh_token, expires: refreshed.expires };
  out.again = (await client.request(readItems('articles', { fields: ['id'], limit: 1 }))).length;
  await client.logout();
  try {
    // the SDK forgets its tokens at logout; present the last refresh token by hand
    await client.request(refresh('json', refreshed.refresh_token));
    out.refresh_after_logout = 'accepted';
  } catch (e) {
    out.refresh_after_logout = e?.errors?.[0]?.extensions?.code ?? String(e?.message ?? e);
  }
} catch (e) {
  out.error = e?.errors ?? String(e?.message ?? e);
}
console.log(JSON.stringify(out));
