"""The job tables, the stack that shares the screen between them, and the counts line above them."""
