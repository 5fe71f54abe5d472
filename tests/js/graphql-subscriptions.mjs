// The graphql-ws library's client (the one Directus's GraphQL subscriptions are written for)
// against our /graphql (docs/realtime.md), unchanged: connection params carry the token, one
// `articles_mutated` subscription receives the create, update and delete of an item written
// through REST. Prints one JSON report.
// Usage: node graphql-subscriptions.mjs <base url> <token>
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [base, token] = process.argv.slice(2);
const report = {};
const client = createClient({
  url: base.replace(/^http/, 'ws') + '/graphql',
  webSocketImpl: WebSocket,
  connectionParams: { access_token: token },
  retryAttempts: 0,
});
const rest = async (method, path, body) => {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  return res.status === 204 ? null : res.json();
};
const timeout = (ms, what) => new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms));

try {
  const events = client.iterate({ query: 'subscription { articles_mutated { key event data { id title } } }' });
  // The subscription is open once the server acknowledged it: give it a moment, then write.
  const first = events.next();
  await new Promise((r) => setTimeout(r, 500));
  const created = await rest('POST', '/items/articles', { title: 'Gql client one', author: 1, status: 'draft' });
  const id = created.data.id;
  report.created_id = id;
  // Other tests write articles meanwhile: keep this item's events only.
  const ours = async (what, pending) => {
    for (let next = pending ?? events.next(); ; next = events.next()) {
      const { value } = await Promise.race([next, timeout(10000, what)]);
      const e = value?.data?.articles_mutated;
      if (e?.key === String(id)) return e;
    }
  };
  report.create = await ours('create', first);
  await rest('PATCH', `/items/articles/${id}`, { title: 'Gql client two' });
  report.update = await ours('update');
  await rest('DELETE', `/items/articles/${id}`);
  report.delete = await ours('delete');
  await events.return();
} catch (e) {
  report.error = String(e?.message ?? JSON.stringify(e));
}
await client.dispose();
console.log(JSON.stringify(report));
process.exit(0);
