import t from 'tap';
import { renderError, REST_ENVELOPE_VERSION } from '../../src/errors/envelopes.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

const rid = 'req_0123456789abcdef0123456789abcdef';

t.test('chat/responses envelope: error {message, type, param, code}', async (t) => {
  const body = JSON.parse(renderError('openai', new GatewayError('invalid_request', { param: 'stop' }), rid));
  t.same(Object.keys(body), ['error']);
  t.same(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  t.equal(body.error.type, 'invalid_request_error');
  t.equal(body.error.param, 'stop');
  t.equal(body.error.code, 'invalid_request');
  t.type(body.error.message, 'string');
});

t.test('chat/responses envelope never uses overloaded_error (not one of its six classes)', async (t) => {
  const body = JSON.parse(renderError('openai', new GatewayError('upstream_overloaded'), rid));
  t.equal(body.error.type, 'api_error');
});

t.test('embeddings envelope: error {code, message, request_id, type}', async (t) => {
  const body = JSON.parse(renderError('embeddings', new GatewayError('invalid_json'), rid));
  t.same(Object.keys(body.error).sort(), ['code', 'message', 'request_id', 'type']);
  t.equal(body.error.request_id, rid);
  t.equal(body.error.code, 'invalid_json');
  const named = JSON.parse(renderError('embeddings', new GatewayError('invalid_request', { param: 'encoding_format' }), rid));
  t.equal(named.error.param, 'encoding_format', 'a refusal names the member at fault');
});

t.test('images envelope: param is always null', async (t) => {
  const body = JSON.parse(renderError('images', new GatewayError('invalid_request', { param: 'size' }), rid));
  t.same(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  t.equal(body.error.param, null);
});

t.test('messages envelope: {type: error, error {type, message, code, param?}} with overloaded_error', async (t) => {
  const body = JSON.parse(renderError('messages', new GatewayError('upstream_overloaded'), rid));
  t.equal(body.type, 'error');
  t.equal(body.error.type, 'overloaded_error');
  t.notOk('param' in body.error, 'param left out when there is none');
  const withParam = JSON.parse(renderError('messages', new GatewayError('invalid_request', { param: 'max_tokens' }), rid));
  t.equal(withParam.error.param, 'max_tokens');
});

t.test('REST envelope: code, message, request_id, version; field_details and limit when set', async (t) => {
  const plain = JSON.parse(renderError('rest', new GatewayError('not_found'), rid));
  t.same(Object.keys(plain.error).sort(), ['code', 'message', 'request_id', 'version']);
  t.equal(plain.error.version, REST_ENVELOPE_VERSION);
  const detailed = JSON.parse(
    renderError('rest', new GatewayError('invalid_request', { fieldDetails: [{ field: 'binding', issue: 'immutable' }], limit: { kind: 'balance' } }), rid),
  );
  t.same(detailed.error.field_details, [{ field: 'binding', issue: 'immutable' }]);
  t.same(detailed.error.limit, { kind: 'balance' });
});
