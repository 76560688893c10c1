/**
 * The dashboard's words over bull-board's own messages, in every language
 * bull-board ships: nothing names Redis, nothing else changes, and the
 * English keys zkq rewrites still exist (a bull-board that renamed one would
 * show its Redis wording again; this test says which).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { bullBoardUiPath, ENGLISH_WORDING, zooKeeperWording } from '../../packages/cli/src/dashboard-wording.ts';

type Messages = { [key: string]: string | Messages };

const LOCALES = join(bullBoardUiPath(), 'dist', 'static', 'locales');

function messages(lng: string): Messages {
  return JSON.parse(readFileSync(join(LOCALES, lng, 'messages.json'), 'utf8')) as Messages;
}

/** Every string of `m` by its dotted key. */
function flat(m: Messages, prefix = ''): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(m)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (typeof v === 'string') out.set(key, v);
    else for (const [kk, vv] of flat(v, key)) out.set(kk, vv);
  }
  return out;
}

test('no language bull-board ships names Redis; the same keys, only those naming Redis changed (and English ones)', () => {
  const languages = readdirSync(LOCALES);
  assert.ok(languages.includes('en-US') && languages.length > 1, `languages: ${languages}`);
  for (const lng of languages) {
    const before = flat(messages(lng));
    const after = flat(zooKeeperWording(messages(lng), lng));
    assert.deepEqual([...after.keys()], [...before.keys()], lng);
    for (const [key, text] of after) {
      assert.doesNotMatch(text, /Redis/, `${lng} ${key}`);
      const rewritten = /Redis/.test(before.get(key) ?? '') || (lng.startsWith('en') && key in ENGLISH_WORDING);
      if (!rewritten) assert.equal(text, before.get(key), `${lng} ${key} is bull-board's`);
    }
  }
});

test('English: the server panel is titled ZooKeeper details and its rows say what they show; bull-board still has each key', () => {
  const english = flat(messages('en-US'));
  for (const key of Object.keys(ENGLISH_WORDING)) assert.ok(english.has(key), `bull-board's en-US has no ${key}`);
  const after = flat(zooKeeperWording(messages('en-US'), 'en-US'));
  assert.equal(after.get('REDIS.TITLE'), 'ZooKeeper details');
  assert.equal(after.get('REDIS.OS'), 'Server');
  assert.equal(after.get('REDIS.BLOCKED_CLIENTS'), 'Outstanding requests');
  assert.equal(after.get('REDIS.TITLE_POSTGRES'), english.get('REDIS.TITLE_POSTGRES'));
  assert.match(after.get('QUEUE.ACTIONS.TOAST.RETRY_SKIPPED') ?? '', /\{\{count\}\}/, 'interpolation kept');
});

test('other languages: Redis is replaced by ZooKeeper word for word', () => {
  assert.equal(flat(zooKeeperWording(messages('de-DE'), 'de-DE')).get('REDIS.TITLE'), 'ZooKeeper-Details');
  assert.equal(flat(zooKeeperWording(messages('fr-FR'), 'fr-FR')).get('REDIS.TITLE'), 'Détails de ZooKeeper');
});
