// Real GraphQL clients against our API: graphql-js builds the schema from introspection
// (buildClientSchema) and validates it and a query against it; graphql-request and the
// Directus SDK's GraphQL client run queries. Prints one JSON report on stdout.
// Usage: node graphql-client.mjs <base url> <static token> [demo]  (demo: also run queries on the demo data)
import { buildClientSchema, getIntrospectionQuery, validateSchema, validate, parse } from 'graphql';
import { GraphQLClient } from 'graphql-request';
import { createDirectus, graphql, staticToken } from '@directus/sdk';

const [base, token, dataset] = process.argv.slice(2);
const demo = dataset === 'demo';
const report = {};
try {
  for (const [name, path] of [['items', '/graphql'], ['system', '/graphql/system']]) {
    const client = new GraphQLClient(base + path, { headers: { Authorization: `Bearer ${token}` } });
    const introspection = await client.request(getIntrospectionQuery());
    const schema = buildClientSchema(introspection);
    report[name] = {
      schemaErrors: validateSchema(schema).map((e) => e.message),
      types: Object.keys(schema.getTypeMap()).filter((t) => !t.startsWith('__')).length,
      queryFields: Object.keys(schema.getQueryType().getFields()).sort(),
      mutationFields: Object.keys(schema.getMutationType()?.getFields() ?? {}).sort(),
    };
    if (name === 'items' && demo) {
      const doc = parse('query($n: Int) { articles(limit: $n, sort: ["id"]) { id title author { name } blocks { item { ... on headings { title } } } } }');
      report.queryErrors = validate(schema, doc).map((e) => e.message);
      const bad = parse('{ articles { no_such_field } }');
      report.badQueryErrors = validate(schema, bad).length;
      report.graphqlRequest = await client.request('query($n: Int) { articles(limit: $n, sort: ["id"]) { id title } }', { n: 2 });
    }
  }
  if (!demo) throw null;
  const sdk = createDirectus(base).with(staticToken(token)).with(graphql());
  report.sdk = await sdk.query('query { tags(limit: 2, sort: ["id"]) { id name } }');
  report.sdkSystem = await sdk.query('mutation { auth_password_request(email: "nobody@example.com") }', {}, 'system');
} catch (e) {
  if (e !== null) report.error = String(e?.message ?? e);
}
console.log(JSON.stringify(report));
