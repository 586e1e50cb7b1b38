"""The MCP server over the memory services: tools, the manual, transports, hook routes.

Where things live (this package imports nothing itself, so ``--version`` and
``--help`` stay fast):

    app.build_server(settings, runtime, groups)   the MCPServer, tools filtered by face
    transports.serve(settings, ...)               open the memory, then stdio / sse / http
    transports.build_http_app(server, runtime, settings)
    context.Runtime / context.AppContext          the one memory of the process
    registry.ToolRegistrar / ToolKind             how a tool group declares its tools
    calls.run_tool / calls.app_of                 the call path every tool takes
    routes                                        /healthz, /session-start, /session-end, /infuse
    security                                      bearer token, Host/Origin allow-lists
    doctor.run_doctor(settings)                   the checks behind ``kenning-encounter doctor``

Adding a tool group: a module with ``register(tools: ToolRegistrar)`` that
declares its tools with ``@tools.tool(ToolKind...)``, appended to
``app.DEFAULT_TOOL_GROUPS``; faces and the namespace apply to it unchanged.
"""
