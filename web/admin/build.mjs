// Builds the admin app into server/admin/webui/dist (embedded in the gyre binary):
// one minified JS bundle and one CSS file with content hashes in their names,
// index.html pointing at them by relative paths, and the icon.
import { build } from 'esbuild';
import { mkdir, readFile, rm, writeFile, copyFile, readdir, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(here, '../../server/admin/webui/dist');

await rm(dist, { recursive: true, force: true });
await mkdir(path.join(dist, 'assets'), { recursive: true });

const result = await build({
  entryPoints: [path.join(here, 'src/main.js')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome100', 'firefox100', 'safari15'],
  outdir: path.join(dist, 'assets'),
  entryNames: 'app-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => path.relative(dist, path.resolve(p)));
const js = outputs.find((p) => p.endsWith('.js'));
const css = outputs.find((p) => p.endsWith('.css'));
if (!js || !css) throw new Error(`build: expected one .js and one .css output, got ${outputs.join(', ')}`);

const template = await readFile(path.join(here, 'index.html'), 'utf8');
await writeFile(path.join(dist, 'index.html'), template.replace('%JS%', `./${js}`).replace('%CSS%', `./${css}`));
await copyFile(path.join(here, 'favicon.svg'), path.join(dist, 'favicon.svg'));

let total = 0;
for (const dir of [dist, path.join(dist, 'assets')]) {
  for (const name of await readdir(dir)) {
    const s = await stat(path.join(dir, name));
    if (s.isFile()) {
      total += s.size;
      console.log(`${path.relative(dist, path.join(dir, name)).padEnd(28)} ${s.size} bytes`);
    }
  }
}
console.log(`total ${total} bytes in ${path.relative(process.cwd(), dist)}`);
