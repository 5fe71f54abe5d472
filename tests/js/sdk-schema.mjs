// The official Directus SDK models content against our REST edge as it would against Directus:
// createCollection, createField, createRelation, updateField, readFieldsByCollection, readCollections,
// items in the new collection (nested through the new relation), deleteCollection. Prints one
// JSON line with what came back; the Rust test (tests/tests/schema_sdk.rs) judges it.
// Usage: node sdk-schema.mjs <base-url> <admin-static-token>
import {
  createDirectus, rest, staticToken, createCollection, createField, createRelation, updateField,
  readFieldsByCollection, readCollections, readRelations, createItem, readItems, deleteCollection, deleteRelation,
} from '@directus/sdk';

const [url, token] = process.argv.slice(2);
const client = createDirectus(url).with(staticToken(token)).with(rest());
const out = {};
try {
  const collection = await client.request(createCollection({
    collection: 'sdk_notes',
    meta: { icon: 'note', note: 'Made by the SDK' },
    schema: {},
    fields: [
      { field: 'id', type: 'integer', meta: { hidden: true, interface: 'input', readonly: true }, schema: { is_primary_key: true, has_auto_increment: true } },
      { field: 'title', type: 'string', meta: { interface: 'input' }, schema: { is_nullable: false } },
    ],
  }));
  out.collection = { collection: collection.collection, icon: collection.meta?.icon, schema: collection.schema };
  const field = await client.request(createField('sdk_notes', { field: 'author', type: 'integer', meta: { interface: 'select-dropdown-m2o', special: ['m2o'] }, schema: {} }));
  out.field = { field: field.field, type: field.type, special: field.meta?.special };
  const relation = await client.request(createRelation({ collection: 'sdk_notes', field: 'author', related_collection: 'authors', meta: { one_field: 'sdk_notes' }, schema: { on_delete: 'SET NULL' } }));
  out.relation = { related_collection: relation.related_collection, on_delete: relation.schema?.on_delete, one_field: relation.meta?.one_field };
  const updated = await client.request(updateField('sdk_notes', 'title', { meta: { note: 'The headline' }, schema: { max_length: 80 } }));
  out.updated = { note: updated.meta?.note, max_length: updated.schema?.max_length };
  out.fields = (await client.request(readFieldsByCollection("sdk_notes"))).map((f) => `${f.field}:${f.type}`);
  out.listed = (await client.request(readCollections())).some((c) => c.collection === 'sdk_notes');
  out.relations = (await client.request(readRelations())).filter((r) => r.collection === 'sdk_notes').map((r) => `${r.field}->${r.related_collection}`);
  await client.request(createItem('sdk_notes', { title: 'First', author: 1 }));
  out.items = await client.request(readItems('sdk_notes', { fields: ['title', { author: ['id'] }] }));
  await client.request(deleteRelation('sdk_notes', 'author'));
  await client.request(deleteCollection('sdk_notes'));
  try {
    await client.request(readItems('sdk_notes'));
    out.after_delete = 'readable';
  } catch (e) {
    out.after_delete = e?.errors?.[0]?.extensions?.code ?? String(e?.message ?? e);
  }
} catch (e) {
  out.error = e?.errors ?? String(e?.message ?? e);
}
console.log(JSON.stringify(out));
