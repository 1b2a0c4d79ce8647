"""The streaming protocols of ``pods/exec`` and ``pods/portforward``, as kubectl speaks them.

Modules and subpackages:

- ``channel_frames``: the ``channel.k8s.io`` frames exec and port-forward WebSockets carry.
- ``exec_process``: starting an exec'd command as a local process inside a container's process
  environment.
- ``exec_session``: one ``pods/exec`` run, whatever carries it: pumps stdio and reports the
  kubelet's final Status.
- ``exec_spdy``: ``pods/exec`` over SPDY: the streams kubectl opens when WebSocket is not used.
- ``exec_websocket``: ``pods/exec`` over WebSocket: the ``channel.k8s.io`` protocols kubectl 1.30+
  speaks by default.
- ``portforward``: ``pods/portforward``: relays each forwarded connection to a TCP port on the pod's
  address.
- ``portforward_websocket``: ``pods/portforward`` over the WebSocket channel protocol
  (``v4.channel.k8s.io``).
- ``spdy_frames``: SPDY/3.1 framing: the frames kubectl's streams travel in, and their compressed
  header blocks.
- ``spdy_session``: a server-side SPDY/3.1 session: the streams a client opens over one upgraded
  connection.
- ``spdy_upgrade``: opening a SPDY session: on the raw upgraded HTTP connection, or tunnelled in a
  WebSocket.
"""
