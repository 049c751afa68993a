const { test, describe, it } = require('node:test');
const assert = require('node:assert');
test('rounds', () => assert.strictEqual(Math.round(2.5), 3));
describe('cart', () => {
  it('adds', () => assert.strictEqual(1 + 1, 2));
});
test('refunds', { todo: 'not built yet' }, () => { throw new Error('refunds are not implemented'); });
test('exports', { todo: true }, () => {});
test('needs the network', { skip: true }, () => {});
