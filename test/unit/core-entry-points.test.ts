/**
 * `@zkq/core`'s two entries: the root is the public API, at most 150 names
 * (values and types), each one listed in docs/api.md; `@zkq/core/internal`
 * holds what the sibling packages share, resolves from them with the same
 * conditions as the root, and exports everything the root does.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CORE = join(ROOT, 'packages/core');
const MAX_PUBLIC_NAMES = 150;
const SIBLINGS = ['producer', 'worker', 'bullmq', 'cli', 'testing'];

const compilerOptions: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  customConditions: ['zkq-source'],
  noEmit: true,
};

/** Every name an entry exports, values and types alike, as a user's `import { ... }` sees them. */
function exportedNames(entry: string): string[] {
  const program = ts.createProgram([entry], compilerOptions);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  assert.ok(source, entry);
  const module = checker.getSymbolAtLocation(source);
  assert.ok(module, `${entry} is a module`);
  return checker
    .getExportsOfModule(module)
    .map((s) => s.name)
    .sort();
}

const publicNames = exportedNames(join(CORE, 'src/index.ts'));

test(`the root entry exports at most ${MAX_PUBLIC_NAMES} names`, () => {
  assert.ok(publicNames.length > 0);
  assert.ok(
    publicNames.length <= MAX_PUBLIC_NAMES,
    `@zkq/core exports ${publicNames.length} names; share what only zkq's packages need through @zkq/core/internal`,
  );
});

test('docs/api.md lists each name of the root entry, and no other', () => {
  const page = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
  const listed = [...page.matchAll(/^\| `([A-Za-z_$][\w$]*)[^`]*` \|/gm)].map((m) => m[1] as string).sort();
  assert.deepEqual(listed, [...new Set(listed)], 'each name listed once');
  assert.deepEqual(listed, publicNames);
});

test('every error of @zkq/core that the docs say a call can end with is in the root entry', async () => {
  // a user tells errors apart by class: one the docs promise must be importable from the public API
  const root: Record<string, unknown> = await import('@zkq/core');
  const internal: Record<string, unknown> = await import('@zkq/core/internal');
  const pages = [join(ROOT, 'README.md'), ...readdirSync(join(ROOT, 'docs')).map((f) => join(ROOT, 'docs', f))];
  const named = new Set<string>();
  for (const page of pages.filter((p) => p.endsWith('.md'))) {
    for (const m of readFileSync(page, 'utf8').matchAll(/`([A-Z][A-Za-z]*Error)`/g)) named.add(m[1] as string);
  }
  const coreErrors = [...named].filter((n) => typeof internal[n] === 'function').sort();
  assert.ok(coreErrors.includes('OutcomeUnknownError'), 'the docs name errors of core');
  assert.deepEqual(
    coreErrors.filter((n) => root[n] === undefined),
    [],
    'errors the docs name but @zkq/core does not export',
  );
});

test("the root entry's values are the ones it declares, and the internal entry has them all", async () => {
  const root: Record<string, unknown> = await import('@zkq/core');
  const internal: Record<string, unknown> = await import('@zkq/core/internal');
  const values = Object.keys(root);
  assert.ok(values.length > 0);
  for (const name of values) {
    assert.ok(publicNames.includes(name), `${name} is among the declared names`);
    assert.equal(internal[name], root[name], `@zkq/core/internal exports ${name}, the same one`);
  }
  assert.ok(Object.keys(internal).length > values.length, 'the internal entry exports more than the root');
});

test('@zkq/core/internal resolves from each sibling package, with the conditions of the root entry', () => {
  const manifest = JSON.parse(readFileSync(join(CORE, 'package.json'), 'utf8'));
  const rootEntry = manifest.exports['.'];
  const internalEntry = manifest.exports['./internal'];
  assert.ok(internalEntry, 'package.json exports ./internal');
  assert.deepEqual(Object.keys(internalEntry), Object.keys(rootEntry), 'the same conditions, in the same order');
  for (const [condition, target] of Object.entries(rootEntry)) {
    assert.equal(internalEntry[condition], (target as string).replace(/\/index\./, '/internal.'), condition);
  }
  for (const sibling of SIBLINGS) {
    const from = join(ROOT, 'packages', sibling, 'src/index.ts');
    const resolved = ts.resolveModuleName('@zkq/core/internal', from, compilerOptions, ts.sys).resolvedModule;
    assert.equal(resolved?.resolvedFileName, join(CORE, 'src/internal.ts'), `from @zkq/${sibling}`);
  }
});
