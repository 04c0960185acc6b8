//! MCP
