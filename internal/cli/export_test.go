package cli

// WriteInventoryForTest exposes writeInventory to the black-box tests.
var WriteInventoryForTest = writeInventory
