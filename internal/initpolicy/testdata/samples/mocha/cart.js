exports.total = (prices) => prices.reduce((a, b) => a + b, 0);
