// The Directus SDK's realtime() client against our /websocket (docs/realtime.md), unchanged: connect
// (handshake auth with the token), subscribe with a query, receive init/create/update/delete
// for writes made through REST, CRUD over the socket, unsubscribe. Prints one JSON report.
// Usage: node sdk-realtime.mjs <base url> <token> <collection>
import { createDirectus, realtime, rest, staticToken, createItem, updateItem, deleteItem } from '@directus/sdk';
import WebSocket from 'ws';

const [url, token, collection] = process.argv.slice(2);
const client = createDirectus(url, { globals: { WebSocket } })
  .with(staticToken(token))
  .with(rest())
  .with(realtime({ authMode: 'handshake', reconnect: false }));

const report = {};
const timeout = (ms, what) => new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms));

try {
  const socket = await client.connect();
  // Only this script's items (other tests write to the collection meanwhile).
  const query = { fields: ['id', 'title'], filter: { title: { _starts_with: 'Realtime' } } };
  const { subscription, unsubscribe } = await client.subscribe(collection, { query });
  const events = subscription[Symbol.asyncIterator]();
  // The SDK hears a message only while the subscription is awaited: wait first, then write.
  const next = (what) => Promise.race([events.next(), timeout(30000, what)]).then((r) => r.value);
  // Deletes carry keys only, so every subscriber of the collection hears every delete: skip
  // those that do not name `key`.
  const nextAbout = async (what, key) => {
    for (;;) {
      const m = await next(what);
      if (m.event !== 'delete' || m.data.map(String).includes(String(key))) return m;
    }
  };

  const init = await next('init');
  report.init = { event: init.event, isArray: Array.isArray(init.data) };

  let pending = next('create');
  const created = await client.request(createItem(collection, { title: 'Realtime one', level: 3 }));
  const create = await pending;
  report.create = { event: create.event, data: create.data };
  report.created_id = created.id;

  pending = next('update');
  await client.request(updateItem(collection, created.id, { title: 'Realtime two' }));
  const update = await pending.then((m) => (m.event === 'delete' ? nextAbout('update', created.id) : m));
  report.update = { event: update.event, data: update.data };

  pending = next('delete');
  await client.request(deleteItem(collection, created.id));
  const del = await pending.then((m) => (m.event === 'delete' && !m.data.map(String).includes(String(created.id)) ? nextAbout('delete', created.id) : m));
  report.delete = { event: del.event, data: del.data };

  // CRUD over the socket: the `items` message type. Its reply and the subscription's create
  // event arrive back to back, often in one read; the SDK's own relay (`onWebSocket('message')`)
  // re-arms a one-shot listener after each message and so misses the second of two messages
  // read together (SDK 18.0.3), so both are heard through a lasting listener on the socket.
  const seen = [];
  const hear = (e) => {
    try {
      seen.push(JSON.parse(String(e.data)));
    } catch {
      // not JSON: not ours
    }
  };
  socket.addEventListener('message', hear);
  const off = () => socket.removeEventListener('message', hear);
  client.sendMessage({ type: 'items', collection, action: 'create', data: { title: 'Realtime socket', level: 2 }, query: { fields: ['id', 'title'] } });
  const reply = () => seen.find((m) => m.type === 'items');
  const socketEvent = () => seen.find((m) => m.type === 'subscription' && m.event === 'create');
  const start = Date.now();
  while (!(reply() && socketEvent()) && Date.now() - start < 30000) await new Promise((r) => setTimeout(r, 50));
  off();
  report.items = reply() ? { title: reply().data.title, hasUid: 'uid' in reply() } : null;
  report.socket_create = socketEvent() ? socketEvent().data.map((i) => i.title) : null;
  if (!socketEvent()) report.seen = seen.map((m) => `${m.type}:${m.event ?? m.status ?? ''}`);

  unsubscribe();
  report.unsubscribed = true;
  client.disconnect();
} catch (e) {
  report.error = String(e?.message ?? JSON.stringify(e));
}
console.log(JSON.stringify(report));
process.exit(0);
