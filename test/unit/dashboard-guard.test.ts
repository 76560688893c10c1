/**
 * The dashboard guard's rules one by one, on requests built by hand: host
 * names with and without ports, credentials, origins, body types and the
 * read-only board (test/e2e/dashboard-security.test.ts tries them on a
 * running board and from a browser).
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { checkRequest, hostName, parseDashboardAuth } from '@zkq/cli';

function req(method: string, headers: Record<string, string>): IncomingMessage {
  return { method, headers } as unknown as IncomingMessage;
}

test('hostName drops the port and keeps IPv6 brackets', () => {
  assert.equal(hostName('127.0.0.1:3000'), '127.0.0.1');
  assert.equal(hostName('LocalHost'), 'localhost');
  assert.equal(hostName('[::1]:3000'), '[::1]');
  assert.equal(hostName('[::1]'), '[::1]');
});

test('parseDashboardAuth takes basic:user:password (colons allowed in the password) and bearer:token only', () => {
  assert.deepEqual(parseDashboardAuth('basic:ops:pa:ss'), { kind: 'basic', user: 'ops', password: 'pa:ss' });
  assert.deepEqual(parseDashboardAuth('bearer:t0k'), { kind: 'bearer', token: 't0k' });
  for (const bad of ['', 'ops:pw', 'basic:ops', 'basic::pw', 'basic:ops:', 'bearer:', 'token']) {
    assert.equal(parseDashboardAuth(bad), undefined, bad);
  }
});

test('hosts: loopback names and the allowed ones, reads included; * accepts any', () => {
  assert.equal(checkRequest(req('GET', { host: '127.0.0.1:3000' })), undefined);
  assert.equal(checkRequest(req('GET', { host: 'localhost:3000' })), undefined);
  assert.equal(checkRequest(req('GET', { host: '[::1]:3000' })), undefined);
  assert.equal(checkRequest(req('GET', { host: 'evil.example:3000' }))?.status, 421);
  assert.equal(checkRequest(req('GET', { host: '127.0.0.1.evil.example' }))?.status, 421);
  assert.equal(checkRequest(req('GET', {}))?.status, 400);
  assert.equal(checkRequest(req('GET', { host: 'Jobs.Example:80' }), { allowedHosts: ['jobs.example'] }), undefined);
  assert.equal(checkRequest(req('GET', { host: 'any.example' }), { allowedHosts: ['*'] }), undefined);
});

test('writes: own origin, same-origin fetch metadata and JSON bodies only; read-only refuses them all', () => {
  const host = { host: '127.0.0.1:3000' };
  const put = (h: Record<string, string>, o = {}) => checkRequest(req('PUT', { ...host, ...h }), o)?.error;
  assert.equal(put({}), undefined, 'a plain client (no Origin, no body)');
  assert.equal(put({ origin: 'http://127.0.0.1:3000' }), undefined);
  assert.equal(put({ origin: 'http://127.0.0.1:3001' }), 'cross_origin');
  assert.equal(put({ origin: 'http://localhost:3000' }), 'cross_origin', 'another name is another origin');
  assert.equal(put({ origin: 'null' }), 'cross_origin', 'a sandboxed page');
  assert.equal(put({ 'sec-fetch-site': 'same-site' }), 'cross_origin');
  assert.equal(put({ 'sec-fetch-site': 'same-origin' }), undefined);
  assert.equal(put({ 'content-length': '5', 'content-type': 'text/plain' }), 'not_json');
  assert.equal(put({ 'transfer-encoding': 'chunked', 'content-type': 'multipart/form-data; boundary=x' }), 'not_json');
  assert.equal(put({ 'content-length': '5', 'content-type': 'application/json; charset=utf-8' }), undefined);
  assert.equal(put({}, { readOnly: true }), 'read_only');
  assert.equal(checkRequest(req('GET', host), { readOnly: true }), undefined, 'a read-only board is read');
});

test('credentials: every request needs them, compared whole', () => {
  const bearer = { auth: { kind: 'bearer', token: 'secret' } } as const;
  const get = (authorization?: string, o: object = bearer) =>
    checkRequest(req('GET', { host: 'localhost', ...(authorization ? { authorization } : {}) }), o)?.error;
  assert.equal(get(), 'unauthorized');
  assert.equal(get('Bearer secret'), undefined);
  assert.equal(get('bearer secret'), undefined);
  assert.equal(get('Bearer secre'), 'unauthorized');
  assert.equal(get('Bearer secrets'), 'unauthorized');
  assert.equal(get('Basic c2VjcmV0'), 'unauthorized');
  const basic = { auth: { kind: 'basic', user: 'ops', password: 'pw' } } as const;
  assert.equal(get(`Basic ${Buffer.from('ops:pw').toString('base64')}`, basic), undefined);
  assert.equal(get(`Basic ${Buffer.from('ops:px').toString('base64')}`, basic), 'unauthorized');
  assert.equal(get('Bearer ops:pw', basic), 'unauthorized');
});
