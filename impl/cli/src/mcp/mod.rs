//! `stoat mcp`: the MCP server inside the binary (server: the stdio JSON-RPC loop; tools: the
//! tool table and argument structs; schemas: the tools' input and output schemas; guards:
//! agent_access, names, host paths, forbidden fields; rate: rate limits; spelling: the tool
//! arguments and tool calls an error names). `mcp doctor` and
//! `mcp install` are `stoat_core::app::mcp`. docs/mcp.md and docs/decisions/mcp.md say why.

pub mod guards;
pub mod rate;
pub mod schemas;
pub mod server;
pub mod spelling;
pub mod tools;
