// The official Directus SDK moves files against our REST edge as against Directus:
// uploadFiles (multipart), readFiles, readAssetRaw (a stream of the bytes), deleteFile. Prints
// one JSON line; the Rust test (tests/tests/files.rs) judges it.
// Usage: node sdk-files.mjs <base-url> <admin-static-token>
import { createDirectus, rest, staticToken, uploadFiles, readFiles, readAssetRaw, deleteFile } from '@directus/sdk';

const [url, token] = process.argv.slice(2);
const client = createDirectus(url).with(staticToken(token)).with(rest());
const out = {};
try {
  const form = new FormData();
  form.append('title', 'SDK upload');
  // Not text/plain: for text the SDK reads the body itself and readAssetRaw hands back nothing
  // (against Directus too).
  form.append('file', new Blob(['hello from the SDK\n'], { type: 'application/octet-stream' }), 'hello.bin');
  const file = await client.request(uploadFiles(form));
  out.uploaded = { title: file.title, filename_download: file.filename_download, type: file.type };
  out.listed = (await client.request(readFiles({ fields: ['id'], limit: -1 }))).some((f) => f.id === file.id);
  const stream = await client.request(readAssetRaw(file.id));
  out.raw = await new Response(stream).text();
  await client.request(deleteFile(file.id));
  try {
    await client.request(readAssetRaw(file.id));
    out.after_delete = 'readable';
  } catch (e) {
    out.after_delete = e?.errors?.[0]?.extensions?.code ?? String(e);
  }
} catch (e) {
  out.error = e?.errors ?? String(e);
}
console.log(JSON.stringify(out));
