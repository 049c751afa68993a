const test = require('node:test');
const assert = require('node:assert');
test('rounds', () => assert.strictEqual(Math.round(-2.5), -2));
