/**
 * The docs a newcomer reads hold together: every relative link of the
 * README, docs/ and the package READMEs names a file that exists, and every
 * `#anchor` a heading of its page (as GitHub makes them); links into this
 * repository on GitHub (the package READMEs use them, npm shows them) too.
 * And the spellings the docs agree on: a namespace has no leading slash, and
 * the BullMQ snippets take FlowProducer from withBackend with the others.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Where the package READMEs point to this repository. */
const GITHUB = 'https://github.com/zkq/zkq';

const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...readdirSync(join(ROOT, 'packages')).map((p) => `packages/${p}/README.md`),
].filter((p) => existsSync(join(ROOT, p)));

/** The page without its fenced code blocks (a `[x](y)` in code is not a link). */
function prose(page: string): string {
  return readFileSync(join(ROOT, page), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes; repeats get -1, -2... */
function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(page).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = (m[1] as string)
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Every link target of a page: `[text](target)`. */
function links(page: string): string[] {
  return [...prose(page).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
}

/** A link target as a repository file (relative to ROOT) and an anchor; undefined for other sites. */
function resolveLink(page: string, target: string): { file: string; anchor: string | undefined } | undefined {
  const [path = '', anchor] = target.split('#') as [string, string | undefined];
  if (target.startsWith(GITHUB)) {
    const rest = path.slice(GITHUB.length).replace(/^\/(?:blob|tree)\/main\//, '');
    return { file: rest === '' || rest === '/' ? 'README.md' : rest, anchor };
  }
  if (/^[a-z]+:/i.test(target)) return undefined;
  if (path === '') return { file: page, anchor };
  return { file: relative(ROOT, join(ROOT, dirname(page), path)), anchor };
}

test('every link of the README, docs/ and the package READMEs names a file and a heading that exist', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of PAGES) {
    for (const target of links(page)) {
      const to = resolveLink(page, target);
      if (!to) continue;
      checked++;
      const file = join(ROOT, to.file);
      if (!existsSync(file)) {
        broken.push(`${page}: ${target} (no ${to.file})`);
        continue;
      }
      const folder = statSync(file).isDirectory();
      const md = folder ? join(to.file, 'README.md') : to.file;
      // `#readme`: GitHub's own anchor of a repository's or folder's README
      const github = target.startsWith(GITHUB) && to.anchor === 'readme' && md.endsWith('README.md');
      if (to.anchor && !github && !(md.endsWith('.md') && anchors(md).has(to.anchor))) {
        broken.push(`${page}: ${target} (no heading #${to.anchor} in ${md})`);
      }
    }
  }
  assert.deepEqual(broken, []);
  assert.ok(checked > 50, `only ${checked} links found`);
});

test('a namespace is spelt without a leading slash in every example', () => {
  const pages = [...PAGES, ...readdirSync(join(ROOT, 'examples')).map((f) => `examples/${f}`)].filter((p) =>
    statSync(join(ROOT, p)).isFile(),
  );
  for (const page of pages) {
    const text = readFileSync(join(ROOT, page), 'utf8');
    assert.doesNotMatch(text, /namespace: ['"`]\//, page);
    assert.doesNotMatch(text, /--namespace[ =]\/\w/, page);
  }
});

test('the BullMQ snippets take FlowProducer from withBackend with the other classes', () => {
  for (const page of ['README.md', 'docs/bullmq-backend.md', 'packages/bullmq/README.md']) {
    const code = [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^```\w*\n([\s\S]*?)^```$/gm)]
      .map((m) => m[1])
      .join('\n');
    const first = /const \{([^}]+)\} = withBackend\(createZooKeeperBackend\)/.exec(code);
    assert.ok(first, `${page} shows withBackend`);
    assert.match(first[1] as string, /\bFlowProducer\b/, page);
    assert.doesNotMatch(code, /import \{[^}]*\bFlowProducer\b[^}]*\} from 'bullmq'/, page);
  }
});
