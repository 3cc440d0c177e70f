from gyre_sdk import connected, new_sub, subscribed, unique_channel


async def test_join_presence_stats_leave(make_client):
    alice, bob = make_client(user="alice"), make_client(user="bob")
    alice_conn = await connected(alice)
    bob_conn = await connected(bob)

    ch = unique_channel("chat:room-")
    sub_a = new_sub(alice, ch)
    await subscribed(sub_a)

    since = sub_a.rec.mark()
    sub_b = new_sub(bob, ch)
    await subscribed(sub_b)
    join = await sub_a.rec.wait("join", since=since, match=lambda c: c.info.user == "bob")
    assert join.info.client == bob_conn.client

    presence = await sub_a.presence()
    assert sorted(presence.clients) == sorted([alice_conn.client, bob_conn.client]), f"{presence!r}"
    assert presence.clients[alice_conn.client].user == "alice"
    assert presence.clients[bob_conn.client].user == "bob"

    stats = await sub_a.presence_stats()
    assert (stats.num_clients, stats.num_users) == (2, 2), f"{stats!r}"

    await sub_b.unsubscribe()
    leave = await sub_a.rec.wait("leave", since=since, match=lambda c: c.info.user == "bob")
    assert leave.info.client == bob_conn.client

    after = await sub_a.presence_stats()
    assert (after.num_clients, after.num_users) == (1, 1), f"{after!r}"
