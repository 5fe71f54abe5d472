// The official Directus JS SDK against our REST edge: login, read items, refresh, read again,
// logout, and a refresh after logout (which must be refused). Prints one JSON line with what
// happened; the Rust test (tests/tests/auth_sdk.rs) judges it.
// Usage: node sdk-client.mjs <base-url> <email> <password>
import { createDirectus, authentication, rest, readItems } from '@directus/sdk';

const [url, email, password] = process.argv.slice(2);
const client = createDirectus(url).with(authentication('json', { autoRefresh: false })).with(rest());
const out = {};
try {
  const login = await client.login(email, password);
  out.login = { access_token: typeof login.access_token, refresh_token: typeof login.refresh_token, expires: login.expires };
  out.items = await client.request(readItems('articles', { fields: ['id', 'title'], sort: ['id'], limit: 2 }));
  const before = await client.getToken();
  const refreshed = await client.refresh();
  out.refreshed = { changed: refreshed.access_token !== before, expires: refreshed.expires };
  out.again = (await client.request(readItems('articles', { fields: ['id'], limit: 1 }))).length;
  await client.logout();
  try {
    await client.refresh();
    out.refresh_after_logout = 'accepted';
  } catch (e) {
    out.refresh_after_logout = e?.errors?.[0]?.extensions?.code ?? String(e?.message ?? e);
  }
} catch (e) {
  out.error = e?.errors ?? String(e?.message ?? e);
}
console.log(JSON.stringify(out));
