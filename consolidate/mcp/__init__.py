"""Layer 6, the MCP server and its tools."""
