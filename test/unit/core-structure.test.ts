/**
 * The shape of the code, checked from its text: no import circle among
 * @zkq/core's source files (type-only imports count: a circle of types is a
 * circle of meaning), and no write to the executor outside the protocol
 * module (packages/core/src/queue/protocol/): front-ends and the runtime call
 * transitions, which alone build ops and run them; no optimistic write loop
 * of its own (the executor's one retry policy plans again); and no source
 * file a reader cannot take in (MAX_SOURCE_LINES).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const coreSrc = join(repo, 'packages/core/src');
const protocolDir = 'packages/core/src/queue/protocol/';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

/** The relative specifiers a file imports or re-exports from (type-only, side-effect and dynamic included). */
function specifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) found.push(m[1] as string);
  return found.filter((s) => s.startsWith('.'));
}

/** The source file a relative specifier names (`./x.js` is `./x.ts`; a directory is its index). */
function target(from: string, specifier: string): string {
  const path = resolve(dirname(from), specifier);
  for (const candidate of [path.replace(/\.js$/, '.ts'), `${path}.ts`, join(path, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return path;
}

/** Each circle of the graph once, as the files along it (a file → the files it imports). */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const onPath = new Map<string, number>();
  const path: string[] = [];
  const visit = (node: string): void => {
    onPath.set(node, path.length);
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const at = onPath.get(next);
      if (at !== undefined) found.push(path.slice(at));
      else if (!done.has(next) && graph.has(next)) visit(next);
    }
    path.pop();
    onPath.delete(node);
    done.add(node);
  };
  for (const node of [...graph.keys()].sort()) if (!done.has(node)) visit(node);
  return found;
}

function coreGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(coreSrc)) {
    const from = relative(coreSrc, file);
    const to = specifiers(readFileSync(file, 'utf8')).map((s) => relative(coreSrc, target(file, s)));
    graph.set(from, [...new Set(to)]);
  }
  return graph;
}

describe('the walk itself', () => {
  test('reads every kind of relative import and finds a circle of three', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      'import {\n  c,\n  type C,\n} from "./c.js";',
      "export * from './d.js';",
      "export type { E } from './e.js';",
      "import './f.js';",
      "const g = await import('./g.js');",
      "import { h } from 'node:fs';",
    ].join('\n');
    assert.deepEqual(specifiers(text).sort(), ['../b.js', './a.js', './c.js', './d.js', './e.js', './f.js', './g.js']);
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c', 'd']],
      ['c', ['a']],
      ['d', []],
    ]);
    assert.deepEqual(circles(graph), [['a', 'b', 'c']]);
    assert.deepEqual(
      circles(
        new Map([
          ['x', ['y']],
          ['y', []],
        ]),
      ),
      [],
    );
  });
});

describe('@zkq/core', () => {
  test('no import circle among its source files', () => {
    const graph = coreGraph();
    assert.ok(graph.size > 50, 'the source files were found');
    const found = circles(graph).map((c) => [...c, c[0]].join(' -> '));
    assert.deepEqual(found, [], `import circles:\n${found.join('\n')}`);
  });

  test('no op is written out outside the protocol module and the session layer', () => {
    const offenders: string[] = [];
    for (const file of packageSources()) {
      const path = relative(repo, file);
      if (path.startsWith(protocolDir) || path.startsWith('packages/core/src/zk/')) continue;
      if (path.startsWith('packages/core/src/recipes/') || path.startsWith('packages/testing/')) continue;
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\bop: '(?:create|delete|setData|check)'/g)) {
        const line = text.slice(0, m.index).split('\n').length;
        offenders.push(`${path}:${line}: ${m[0]}`);
      }
    }
    assert.deepEqual(offenders, [], `build it in a transition in ${protocolDir} instead:\n${offenders.join('\n')}`);
  });

  test('the executor is run and made only inside the protocol module', () => {
    const packages = join(repo, 'packages');
    const offenders: string[] = [];
    for (const pkg of readdirSync(packages)) {
      const src = join(packages, pkg, 'src');
      if (!statSync(src, { throwIfNoEntry: false })?.isDirectory()) continue;
      for (const file of sourceFiles(src)) {
        const path = relative(repo, file);
        if (path.startsWith(protocolDir)) continue;
        const text = readFileSync(file, 'utf8');
        for (const m of text.matchAll(/\bexecutor\.run\(|\.runPlanned\(|\bnew TxExecutor\b/g)) {
          const line = text.slice(0, m.index).split('\n').length;
          offenders.push(`${path}:${line}: ${m[0]}`);
        }
      }
    }
    assert.deepEqual(offenders, [], `write through a transition in ${protocolDir} instead:\n${offenders.join('\n')}`);
  });
});

/**
 * Where a loop in `file` reads a write's conflict itself (a node changed
 * since the version read: BadVersionError): `path:line`. A loop that
 * creates or reads what is there (NodeExistsError) is no optimistic write.
 */
function conflictLoops(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const mentionsConflict = (node: ts.Node): boolean =>
    (ts.isIdentifier(node) && node.text === 'BadVersionError') || ts.forEachChild(node, mentionsConflict) === true;
  const visit = (node: ts.Node): void => {
    const loop = ts.isForStatement(node) || ts.isWhileStatement(node) || ts.isDoStatement(node);
    if (loop && mentionsConflict(node)) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart());
      found.push(`${relative(repo, file)}:${line + 1}`);
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test('no optimistic write loop of its own: a conflict is planned again by the executor (replan.ts)', () => {
  const own = conflictLoops(
    'loop.ts',
    'for (;;) { try { await w(); return; } catch (e) { if (!(e instanceof BadVersionError)) throw e; } }',
  );
  assert.equal(own.length, 1, 'a hand-written loop is found');
  const offenders = packageSources().flatMap((file) => {
    const path = relative(repo, file);
    if (path === `${protocolDir}replan.ts` || path.startsWith('packages/core/src/zk/')) return [];
    if (path.startsWith('packages/core/src/recipes/') || path.startsWith('packages/testing/')) return [];
    return conflictLoops(file, readFileSync(file, 'utf8'));
  });
  assert.deepEqual(offenders, [], `plan it through executor.runPlanned instead:\n${offenders.join('\n')}`);
});

/** The most lines a source file may have: past it, split the file by subject. */
const MAX_SOURCE_LINES = 450;

/** Every TypeScript source file of every package (packages/<name>/src). */
function packageSources(): string[] {
  const packages = join(repo, 'packages');
  return readdirSync(packages).flatMap((pkg) => {
    const src = join(packages, pkg, 'src');
    return statSync(src, { throwIfNoEntry: false })?.isDirectory() ? sourceFiles(src) : [];
  });
}

test(`no source file of a package is over ${MAX_SOURCE_LINES} lines`, () => {
  const files = packageSources();
  assert.ok(files.length > 100, 'the source files were found');
  const long = files
    .map((file) => ({ path: relative(repo, file), lines: readFileSync(file, 'utf8').split('\n').length }))
    .filter((f) => f.lines > MAX_SOURCE_LINES)
    .map((f) => `${f.path}: ${f.lines} lines`);
  assert.deepEqual(long, [], `split these by subject:\n${long.join('\n')}`);
});
