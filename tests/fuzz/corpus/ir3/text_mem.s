˜
  shl.b r1.x, r0.x, 2
  add.u r2.x, c0.x, r1.x
  mov.u32u32 r2.y, c0.y
  ldg.u32 r3.x, g[r2.x], 1
  (sy)add.u r3.x, r3.x, 7
  stl.u32 l[r1.x], r3.x, 1
  bar
  ldl.u32 r4.x, l[r1.x], 1
  (sy)stg.u32 g[r2.x+4], r4.x, 1
  end
