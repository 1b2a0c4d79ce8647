"""The streaming protocols of ``pods/exec`` and ``pods/portforward``, as kubectl speaks them.

``exec_websocket`` (the ``channel.k8s.io`` WebSocket protocols, v5 by default in kubectl
1.30+), ``exec_spdy`` (SPDY/3.1 streams, kubectl's fallback), ``portforward`` (stream pairs
over SPDY, raw or tunnelled in a WebSocket), on top of ``spdy_frames``, ``spdy_session`` and
``spdy_upgrade``; ``exec_process`` and ``exec_session`` run the command itself.
"""
