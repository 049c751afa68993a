const assert = require('assert');
describe('cart', function () {
  it('adds prices', function () { assert.strictEqual(250 + 100, 350); });
  it('is empty at first', function () { assert.deepStrictEqual([], []); });
});
