/** The DIGEST-MD5 client (RFC 2831) alone: the RFC's own example, and a whole exchange against a model server. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DigestMd5Client,
  digestResponse,
  parseDirectives,
  SaslProtocolError,
} from '../../packages/core/src/zk/sasl.ts';

test("RFC 2831's example: the response and the server's rspauth", () => {
  const p = {
    username: 'chris',
    password: 'secret',
    realm: 'elwood.innosoft.com',
    nonce: 'OA6MG9tEQGm2hh',
    cnonce: 'OA6MHXh6VqTrRk',
    nc: '00000001',
    digestUri: 'imap/elwood.innosoft.com',
    utf8: false,
  };
  assert.equal(digestResponse(p, 'AUTHENTICATE'), 'd388dad90d4bbd760a152321f2143af7');
  assert.equal(digestResponse(p, ''), 'ea40f60335c427b5527b84dbabcdfffd');
});

test('directives: quoted values with commas and escapes, bare values, first wins', () => {
  const d = parseDirectives('realm="zk-sasl-md5",nonce="a,b\\"c",qop="auth,auth-int",charset=utf-8,algorithm=md5-sess');
  assert.equal(d.get('realm'), 'zk-sasl-md5');
  assert.equal(d.get('nonce'), 'a,b"c');
  assert.equal(d.get('qop'), 'auth,auth-int');
  assert.equal(d.get('charset'), 'utf-8');
});

test("an exchange as ZooKeeper's server runs it: empty first token, the digest, the server's proof checked", () => {
  const client = new DigestMd5Client({ username: 'alice', password: 'secret' }, 'fixed-cnonce');
  assert.equal(client.next(Buffer.alloc(0)).length, 0, 'DIGEST-MD5 has no initial response');
  const response = parseDirectives(
    client
      .next(Buffer.from('realm="zk-sasl-md5",nonce="n0nce",qop="auth",charset=utf-8,algorithm=md5-sess'))
      .toString(),
  );
  assert.equal(response.get('username'), 'alice');
  assert.equal(response.get('digest-uri'), 'zookeeper/zk-sasl-md5');
  assert.equal(response.get('qop'), 'auth');
  assert.equal(response.has('password'), false);
  const p = {
    username: 'alice',
    password: 'secret',
    realm: 'zk-sasl-md5',
    nonce: 'n0nce',
    cnonce: 'fixed-cnonce',
    nc: '00000001',
    digestUri: 'zookeeper/zk-sasl-md5',
    utf8: true,
  };
  assert.equal(response.get('response'), digestResponse(p, 'AUTHENTICATE'));
  const noNonce = new DigestMd5Client({ username: 'a', password: 'b' });
  noNonce.next(Buffer.alloc(0));
  assert.throws(() => noNonce.next(Buffer.from('realm="r"')), SaslProtocolError, 'a challenge without a nonce');
  client.next(Buffer.from(`rspauth=${digestResponse(p, '')}`));
  assert.equal(client.done, true);

  const fooled = new DigestMd5Client({ username: 'alice', password: 'secret' });
  fooled.next(Buffer.alloc(0));
  fooled.next(Buffer.from('realm="zk-sasl-md5",nonce="n",qop="auth"'));
  assert.throws(() => fooled.next(Buffer.from('rspauth=00000000000000000000000000000000')), SaslProtocolError);
});

test('a queue connection with bad SASL options is refused with InvalidArgumentError naming the option', async () => {
  const { InvalidArgumentError, validateConnection } = await import('@zkq/core/internal');
  const cases: [unknown, string][] = [
    ['alice:secret', 'connection.sasl'],
    [{ username: '', password: 'x' }, 'connection.sasl.username'],
    [{ username: 'alice' }, 'connection.sasl.password'],
    [{ username: 'alice', password: 'x', mechanism: 'GSSAPI' }, 'connection.sasl.mechanism'],
    [{ user: 'alice', password: 'x' }, 'connection.sasl.user'],
  ];
  for (const [sasl, argument] of cases) {
    assert.throws(
      () => validateConnection({ connectionString: '127.0.0.1:2181', sasl }),
      (err: unknown) => err instanceof InvalidArgumentError && err.argument === argument,
      JSON.stringify(sasl),
    );
  }
});
