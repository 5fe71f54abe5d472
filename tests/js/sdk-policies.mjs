// The official Directus SDK sets up access as against Directus 11: createPolicy with its
// permission rows, createRole holding the policy, createUser in the role; the user's readItems
// is governed by the policy; readUserPermissions, readPolicyGlobals and readPolicies say what the
// user has. Prints one JSON line; the Rust test (tests/tests/policies.rs) judges it.
// Usage: node sdk-policies.mjs <base-url> <admin-static-token>
import {
  createDirectus, rest, staticToken, createPolicy, createRole, createUser, readItems,
  readUserPermissions, readPolicyGlobals, readPolicies,
} from '@directus/sdk';

const [url, token] = process.argv.slice(2);
const admin = createDirectus(url).with(staticToken(token)).with(rest());
const reader = createDirectus(url).with(staticToken('sdk-reader-token')).with(rest());
const code = (e) => e?.errors?.[0]?.extensions?.code ?? String(e);
const out = {};
try {
  const policy = await admin.request(createPolicy({
    name: 'SDK readers', icon: 'menu_book', app_access: true, admin_access: false,
    permissions: [{ collection: 'articles', action: 'read', permissions: { status: { _eq: 'published' } }, fields: ['id', 'title', 'status'] }],
  }));
  out.policy = { name: policy.name, app_access: policy.app_access, admin_access: policy.admin_access };
  const role = await admin.request(createRole({ name: 'SDK readers', policies: [{ policy: policy.id }] }));
  await admin.request(createUser({ email: 'sdk-reader@example.com', password: 'a-password-1', role: role.id, token: 'sdk-reader-token' }));
  // The policy reaches every core replica with the next snapshot rebuild.
  let items;
  for (let i = 0; i < 100 && !items; i++) {
    try {
      items = await reader.request(readItems('articles', { fields: ['status'], limit: -1 }));
    } catch (e) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  out.statuses = [...new Set((items ?? []).map((i) => i.status))];
  out.count = (items ?? []).length;
  try {
    await reader.request(readItems('authors'));
    out.authors = 'readable';
  } catch (e) {
    out.authors = code(e);
  }
  const me = await reader.request(readUserPermissions());
  out.me = me.articles?.read;
  out.globals = await reader.request(readPolicyGlobals());
  out.policies = (await reader.request(readPolicies({ fields: ['name'] }))).map((p) => p.name);
} catch (e) {
  out.error = e?.errors ?? String(e);
}
console.log(JSON.stringify(out));
